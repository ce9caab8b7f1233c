
bernoulli_double_expanded2
x
"(?¦7?³N?w}?HéØ>QY%?nà><Kd?š²v?rRÄ>y