
'reduce_min_default_axes_keepdims_random564d3f08*E
dataFP32*220Öìy? ¸‰@‰@IÍe?—qÃ¿•¾:@ØÆŸ¿¼ú@A_Aâ1À;´º@&ñ?2	
reduced