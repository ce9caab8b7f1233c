
'reduce_min_default_axes_keepdims_random?
data"0Öìy? ¸‰@‰@IÍe?—qÃ¿•¾:@ØÆŸ¿¼ú@A_Aâ1À;´º@&ñ?reduced