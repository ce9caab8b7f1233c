
	max_uint823e76904*
data_0UINT8*"*
data_1UINT8*"2
result