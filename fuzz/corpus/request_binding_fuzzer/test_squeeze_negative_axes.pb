
squeeze_negative_axesI
x"<xÌá?háÌ>“Žz?Ëj@$ï?â.z¿ÿ8s?bý¾hdÓ½ø9Ò>(€>¢%º?^ÓB?À0ù=Bã>
axes"þÿÿÿÿÿÿÿy