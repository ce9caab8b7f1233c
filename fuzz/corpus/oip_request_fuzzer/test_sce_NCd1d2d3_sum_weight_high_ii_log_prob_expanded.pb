
1sce_NCd1d2d3_sum_weight_high_ii_log_prob_expanded64dcacae*M
xFP32*>2<?¦7?³N?w}?HéØ>QY%?nà><Kd?š²v?rRÄ>~®J?¨e?^k?çól?Z{‘=*
yINT64*
*$
wFP32*2(Š¼>u?¸>
¾^?Á|ò>2
z2

log_prob