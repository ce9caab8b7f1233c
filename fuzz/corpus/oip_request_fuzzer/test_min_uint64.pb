

min_uint6465bf34ae*
data_0UINT64***
data_1UINT64**2
result