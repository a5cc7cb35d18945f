module moby-ab/pingpong

go 1.22
