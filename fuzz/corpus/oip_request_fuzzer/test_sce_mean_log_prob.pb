
sce_mean_log_probc0c3db54*M
xFP32*>2<?¦7?³N?w}?HéØ>QY%?nà><Kd?š²v?rRÄ>~®J?¨e?^k?çól?Z{‘=*
yINT64*2
z2

log_prob