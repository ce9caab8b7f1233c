
castlike_FLOAT_to_FLOAT16?
input"0?¦7?³N?w}?HéØ>QY%?nà><Kd?š²v?rRÄ>~®J?¨e?
like
"d8output 