
m*)
xFP32"
shared_memory_regionr