module moby-ab/linkemu

go 1.22
