# shellcheck shell=bash
# Application images (nginx, redis, postgres) for the seeds' run-time and
# checkpoint experiments, from Debian bookworm packages. Sourced by
# hack/hosts/images.sh.
#
# One debootstrap (minbase + the three servers) makes a shared base layer; each
# image adds a small layer with its configuration and a foreground command.
# Nothing is installed on the host, and no service starts: debootstrap replaces
# start-stop-daemon while it configures packages.
#
# nginx and redis run as root: CRIU must read the rlimits of every process it
# dumps, which takes CAP_SYS_RESOURCE for a process of another user, and some
# hosts (these test machines among them) withhold that capability even from
# root. postgres refuses to run as root, so it cannot be checkpointed there.

APP_SUITE=bookworm
APP_PACKAGES="nginx-light,redis-server,postgresql"
# Bump when app_base changes what goes into the base layer.
APP_BASE_RECIPE=1
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

app_base() { # prints the path of the base layer tar, building it if needed
	local cache=$OUT/cache h
	h=$(echo "$APP_SUITE $APP_PACKAGES $APP_BASE_RECIPE" | sha256sum | cut -c1-16)
	if [ -f "$cache/base.tar" ] && [ "$(cat "$cache/base.stamp" 2>/dev/null)" = "$h" ]; then
		echo "$cache/base.tar"
		return 0
	fi
	command -v debootstrap >/dev/null || die "images: debootstrap is missing (apt-get install debootstrap)"
	mkdir -p "$cache"
	rm -rf "$cache/rootfs"
	log "images: debootstrap $APP_SUITE with $APP_PACKAGES (about a minute)"
	debootstrap --variant=minbase --include="$APP_PACKAGES" "$APP_SUITE" "$cache/rootfs" "$DEBIAN_MIRROR" \
		>"$cache/debootstrap.log" 2>&1 || {
		tail -n 20 "$cache/debootstrap.log" >&2
		die "images: debootstrap failed (log: $cache/debootstrap.log)"
	}
	# What an image does not need: package caches and lists, docs, locales.
	rm -rf "$cache/rootfs"/var/cache/apt/* "$cache/rootfs"/var/lib/apt/lists/* \
		"$cache/rootfs"/usr/share/doc/* "$cache/rootfs"/usr/share/man/* "$cache/rootfs"/usr/share/locale/* \
		"$cache/rootfs"/var/log/*.log "$cache/rootfs"/var/log/apt/*
	python3 "$MKIMAGE" --layer-only "$cache/rootfs" -o "$cache/base.tar"
	rm -rf "$cache/rootfs"
	echo "$h" >"$cache/base.stamp"
	echo "$cache/base.tar"
}

app_conf_nginx() { # dir: config layer
	mkdir -p "$1/etc/nginx" "$1/var/www/ab"
	# A main config of its own (not Debian's, whose default site also takes
	# port 80): static files, no access log, one worker per core, workers as
	# root (see above).
	cat >"$1/etc/nginx/ab.conf" <<-'CONF'
		user root;
		worker_processes auto;
		pid /run/nginx.pid;
		error_log stderr;
		events { worker_connections 1024; }
		http {
		    include /etc/nginx/mime.types;
		    sendfile on;
		    access_log off;
		    server {
		        listen 80 default_server;
		        root /var/www/ab;
		        location / { try_files $uri $uri/ =404; }
		    }
		}
	CONF
	echo '<html><body>moby-ab</body></html>' >"$1/var/www/ab/index.html"
	head -c 1024 /dev/zero | tr '\0' a >"$1/var/www/ab/1k.txt"
	head -c 102400 /dev/zero | tr '\0' b >"$1/var/www/ab/100k.txt"
	APP_ARGS=(--expose 80 --cmd '["nginx", "-c", "/etc/nginx/ab.conf", "-g", "daemon off;"]')
}

app_conf_redis() {
	mkdir -p "$1/etc/redis"
	cat >"$1/etc/redis/ab.conf" <<-'CONF'
		bind 0.0.0.0
		port 6379
		protected-mode no
		daemonize no
		save ""
		appendonly no
		logfile ""
		dir /var/lib/redis
	CONF
	APP_ARGS=(--expose 6379 --cmd '["redis-server", "/etc/redis/ab.conf"]')
}

app_conf_postgres() {
	local conf=$1/etc/postgresql/15/main/conf.d
	mkdir -p "$conf"
	printf "listen_addresses = '*'\n" >"$conf/ab.conf"
	APP_ARGS=(--expose 5432 --user postgres --cmd '["/usr/lib/postgresql/15/bin/postgres",
		"-D", "/var/lib/postgresql/15/main",
		"-c", "config_file=/etc/postgresql/15/main/postgresql.conf",
		"-c", "hba_file=/etc/postgresql/15/main/ab_hba.conf"]')
	# Trust everyone: a benchmark target on a private bridge, not a database.
	printf 'local all all trust\nhost all all 0.0.0.0/0 trust\n' >"$1/etc/postgresql/15/main/ab_hba.conf"
}

build_app() { # name
	local name=$1 base h tmp
	base=$(app_base)
	h=$(cat "$OUT/cache/base.stamp" "$MKIMAGE" "$SRC/apps.sh" | sha256sum | cut -c1-16)
	up_to_date "$name" "$h" && return 0
	tmp=$(mktemp -d)
	"app_conf_$name" "$tmp/conf"
	# The config layer's files belong to root, as the base's configuration does.
	python3 "$MKIMAGE" --ref "ab/$name:latest" --layer-tar "$base" --layer "$tmp/conf" \
		"${APP_ARGS[@]}" -o "$OUT/$name.tar"
	rm -rf "$tmp"
	mark "$name" "$h"
}
