
net