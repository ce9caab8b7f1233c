
bernoulli_double_expanded7c3f02c8*
xFP32
2
y:(?¦7?іN?w}?HйШ>QY%?nа><Kd?љІv?rRД>