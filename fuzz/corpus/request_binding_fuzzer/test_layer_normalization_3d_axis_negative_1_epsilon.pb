
.layer_normalization_3d_axis_negative_1_epsilon„
X"xxÌá?háÌ>“Žz?Ëj@$ï?â.z¿ÿ8s?bý¾hdÓ½ø9Ò>(€>¢%º?^ÓB?À0ù=Bã>]×ª>ü=¿?R¾iJ >¦Z¿/d#ÀŒS'?±K]?‡þ=¿©C@¨(º¿Hm;= ­?¾2Ä?ó¼?
W"Ð¸t¿†$±¾t\í¾½„ö>Ö8Å¿
B"=@C >ÞÀm>µé¿Á¡s¾YMean	InvStdDev