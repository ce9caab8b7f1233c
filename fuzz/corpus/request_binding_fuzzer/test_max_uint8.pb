
	max_uint8
data_0"
data_1"result 