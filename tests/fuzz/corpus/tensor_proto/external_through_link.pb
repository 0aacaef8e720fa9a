Bexternal_through_linkj
locationup/secret.binj
offset0j
length8p