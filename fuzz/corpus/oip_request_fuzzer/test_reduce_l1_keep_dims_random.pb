
reduce_l1_keep_dims_randomd8bdd869*
dataFP322	
reduced:0Öìy? ¸‰@‰@IÍe?—qÃ¿•¾:@ØÆŸ¿¼ú@A_Aâ1À;´º@&ñ?