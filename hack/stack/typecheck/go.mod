module moby-ab/typecheck

go 1.24
