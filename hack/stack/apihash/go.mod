module moby-ab/apihash

go 1.24
