module moby-ab/integration

go 1.22
