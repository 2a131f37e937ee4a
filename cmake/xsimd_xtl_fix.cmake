# Debian's xsimd 8.1 package config lists `xtl` as a link dependency although tempo uses no
# xtl feature; without libxtl-dev the link line gets a bare -lxtl. An empty target satisfies it.
if(TARGET xsimd AND NOT TARGET xtl)
  add_library(xtl INTERFACE IMPORTED)
endif()
