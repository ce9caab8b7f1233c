
castlike_FLOAT_to_FLOAT163db38206*
inputFP32*
likeFP162
output:0?¦7?³N?w}?HéØ>QY%?nà><Kd?š²v?rRÄ>~®J?¨e?:d8