#!/usr/bin/env bats
# The application images (Debian's nginx, redis, postgres) serve on both
# flavors, and a restored server answers again (patched).

load helpers

setup_file() {
	export AB_IMAGES="nginx redis postgres"
	ab_up stock patched
}

teardown_file() {
	ab_down stock patched
}

setup() {
	load_libs
}

teardown() {
	remove_test_containers
}

ip_of() { docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$1"; }

check_nginx() {
	use "$1"
	docker run -d --name web -p 8080:80 ab/nginx >/dev/null
	wait_for 20 in_ns "$1" curl -fs -o /dev/null http://127.0.0.1:8080/
	run in_ns "$1" curl -fs "http://$(ip_of web)/1k.txt"
	assert_success
	[ "${#output}" -eq 1024 ]
}

check_redis() {
	use "$1"
	docker run -d --name kv ab/redis >/dev/null
	wait_for 20 bash -c "docker logs kv 2>&1 | grep -q 'Ready to accept connections'"
	run in_ns "$1" bash -c "exec 3<>/dev/tcp/$(ip_of kv)/6379; printf 'PING\r\n' >&3; head -c 7 <&3"
	assert_output --partial PONG
}

check_postgres() {
	use "$1"
	docker run -d --name db ab/postgres >/dev/null
	wait_for 30 bash -c "docker logs db 2>&1 | grep -q 'ready to accept connections'"
	run docker exec db psql -h "$(ip_of db)" -U postgres -tAc 'select 40 + 2'
	assert_output 42
}

@test "stock: nginx serves on its bridge address and published port" { check_nginx stock; }
@test "patched: nginx serves on its bridge address and published port" { check_nginx patched; }
@test "stock: redis answers PING" { check_redis stock; }
@test "patched: redis answers PING" { check_redis patched; }
@test "stock: postgres answers a query over TCP" { check_postgres stock; }
@test "patched: postgres answers a query over TCP" { check_postgres patched; }

@test "patched: a restored nginx answers on its published port and bridge address" {
	use patched
	docker run -d --name web -p 8080:80 ab/nginx >/dev/null
	wait_for 20 in_ns patched curl -fs -o /dev/null http://127.0.0.1:8080/
	run docker checkpoint create web cp1
	assert_success
	run docker start --checkpoint cp1 web
	assert_success
	run in_ns patched curl -fs --max-time 10 http://127.0.0.1:8080/
	assert_success
	assert_output --partial moby-ab
	run in_ns patched curl -fs --max-time 10 "http://$(ip_of web)/"
	assert_success
}
