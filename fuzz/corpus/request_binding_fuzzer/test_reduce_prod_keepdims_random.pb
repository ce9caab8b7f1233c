
reduce_prod_keepdims_random?
data"0Öìy? ¸‰@‰@IÍe?—qÃ¿•¾:@ØÆŸ¿¼ú@A_Aâ1À;´º@&ñ?reduced 