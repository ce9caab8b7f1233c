
	max_int64c166ebc5*
data_0INT64**
data_1INT64*2
result