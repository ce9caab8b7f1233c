
	mod_uint80ccebcc5*
xUINT8*
yUINT82
z::