Bexternalj
locationx.binj
offset0j
length8p