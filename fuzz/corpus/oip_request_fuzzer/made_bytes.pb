
m*
xBYTES*Ba