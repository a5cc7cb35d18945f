module moby-ab/logwrites

go 1.22
