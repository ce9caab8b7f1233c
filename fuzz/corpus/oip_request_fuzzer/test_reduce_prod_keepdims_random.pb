
reduce_prod_keepdims_random10918681*E
dataFP32*220Öìy? ¸‰@‰@IÍe?—qÃ¿•¾:@ØÆŸ¿¼ú@A_Aâ1À;´º@&ñ?2	
reduced