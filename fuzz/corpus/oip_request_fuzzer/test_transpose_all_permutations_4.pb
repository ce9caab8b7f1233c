
transpose_all_permutations_4c758c071*u
dataFP32*b2`?¦7?³N?w}?HéØ>QY%?nà><Kd?š²v?rRÄ>~®J?¨e?^k?çól?Z{‘=Ùp²=¡¥<“&U?H5G?¹^?»†z?¨•L?Gì>ÃÐG?2

transposed