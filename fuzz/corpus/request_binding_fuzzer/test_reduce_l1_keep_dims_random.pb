
reduce_l1_keep_dims_random?
data"0Öìy? ¸‰@‰@IÍe?—qÃ¿•¾:@ØÆŸ¿¼ú@A_Aâ1À;´º@&ñ?reduced