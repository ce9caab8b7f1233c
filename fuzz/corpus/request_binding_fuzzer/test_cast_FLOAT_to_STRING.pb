
cast_FLOAT_to_STRING?
input"0z?(×?a@=?aƒ =Ì>)ö=°Ÿ—>…'ó=±Î¢>GÔ>Ã_ƒ=ÚE1?output