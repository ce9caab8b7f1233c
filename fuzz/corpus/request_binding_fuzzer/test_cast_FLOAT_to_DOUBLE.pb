
cast_FLOAT_to_DOUBLE?
input"0^k?çól?Z{‘=Ùp²=¡¥<“&U?H5G?¹^?»†z?¨•L?Gì>ÃÐG?output 