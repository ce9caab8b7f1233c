
(argmin_keepdims_random_select_last_indexo
data"`Öìy? ¸‰@‰@IÍe?—qÃ¿•¾:@ØÆŸ¿¼ú@A_Aâ1À;´º@&ñ?¯1®?à0AºD	Á^Áµ‡ÁoàÔ@4²@ÊÎì@j(A$v¿@Å9E¿æ‰³@result