
	min_uint86ae2312a*
data_0UINT8*
data_1UINT82
result::