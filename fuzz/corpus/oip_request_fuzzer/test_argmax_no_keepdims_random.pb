
argmax_no_keepdims_random0148dcd8*u
dataFP32*b2`Öìy? ¸‰@‰@IÍe?—qÃ¿•¾:@ØÆŸ¿¼ú@A_Aâ1À;´º@&ñ?¯1®?à0AºD	Á^Áµ‡ÁoàÔ@4²@ÊÎì@j(A$v¿@Å9E¿æ‰³@2
result