module moby-ab/commits

go 1.22
