module moby-ab/zns-probe

go 1.22
