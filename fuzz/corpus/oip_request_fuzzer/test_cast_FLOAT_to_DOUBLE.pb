
cast_FLOAT_to_DOUBLE09115e33*
inputFP322
output:0^k?çól?Z{‘=Ùp²=¡¥<“&U?H5G?¹^?»†z?¨•L?Gì>ÃÐG?