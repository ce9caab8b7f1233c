
m1"
priority("
sequence_id"
timeoutè