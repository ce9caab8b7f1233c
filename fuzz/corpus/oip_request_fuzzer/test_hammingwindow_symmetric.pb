
hammingwindow_symmetric31202801*
xINT32*
2
y