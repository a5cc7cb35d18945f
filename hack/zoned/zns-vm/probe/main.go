// Command zns-probe checks that a zoned block device behaves as a
// host-managed zoned device should, through the kernel's zoned block ioctls:
// zone report, a direct write at a write pointer, reset, finish, open and
// close. hack/zoned/zns-vm.sh runs it inside its guest (hack/zoned/zns-vm.sh check) to
// test the whole path: the guest kernel, the emulated ZNS namespace and the
// way a test binary is started there.
//
// It uses the device named by $ZNS_DEVICE (or its first argument), writes to
// its first three zones and resets them again. It exits 0 only if every check
// held.
package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"syscall"
	"unsafe"
)

// linux/blkzoned.h and linux/fs.h
const (
	blkReportZone  = 0xC0101282
	blkResetZone   = 0x40101283
	blkGetZoneSz   = 0x80041284
	blkGetNrZones  = 0x80041285
	blkOpenZone    = 0x40101286
	blkCloseZone   = 0x40101287
	blkFinishZone  = 0x40101288
	blkSSzGet      = 0x1268 // BLKSSZGET: logical block size
	blkGetSize64   = 0x80081272
	zoneRepCapFlag = 1 // BLK_ZONE_REP_CAPACITY

	condEmpty   = 0x1
	condImpOpen = 0x2
	condExpOpen = 0x3
	condClosed  = 0x4
	condFull    = 0xE

	reportHeader = 16
	zoneSize     = 64 // sizeof(struct blk_zone)
	blockSize    = 4096
)

var condNames = map[uint8]string{
	0x0: "NOT_WP", 0x1: "EMPTY", 0x2: "IMP_OPEN", 0x3: "EXP_OPEN",
	0x4: "CLOSED", 0xD: "READONLY", 0xE: "FULL", 0xF: "OFFLINE",
}

var typeNames = map[uint8]string{1: "CONV", 2: "SEQWRITE_REQ", 3: "SEQWRITE_PREF"}

type zone struct {
	Start, Len, WP uint64 // 512-byte sectors
	Type, Cond     uint8
	Capacity       uint64 // 512-byte sectors; 0 if the kernel does not report it
}

func (z zone) String() string {
	return fmt.Sprintf("start=%d len=%d wp=%d (+%d) cap=%d type=%s cond=%s(0x%x)",
		z.Start, z.Len, z.WP, z.WP-z.Start, z.Capacity, typeNames[z.Type], condNames[z.Cond], z.Cond)
}

func ioctl(fd int, req uintptr, arg unsafe.Pointer) error {
	_, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), req, uintptr(arg))
	if e != 0 {
		return e
	}
	return nil
}

func getU32(fd int, req uintptr) (uint32, error) {
	var v uint32
	err := ioctl(fd, req, unsafe.Pointer(&v))
	return v, err
}

// report returns up to n zones starting with the zone that holds sector.
func report(fd int, sector uint64, n int) ([]zone, error) {
	buf := make([]byte, reportHeader+n*zoneSize)
	binary.LittleEndian.PutUint64(buf[0:], sector)
	binary.LittleEndian.PutUint32(buf[8:], uint32(n))
	if err := ioctl(fd, blkReportZone, unsafe.Pointer(&buf[0])); err != nil {
		return nil, fmt.Errorf("BLKREPORTZONE: %w", err)
	}
	got := int(binary.LittleEndian.Uint32(buf[8:]))
	flags := binary.LittleEndian.Uint32(buf[12:])
	zones := make([]zone, 0, got)
	for i := 0; i < got; i++ {
		b := buf[reportHeader+i*zoneSize:]
		z := zone{
			Start: binary.LittleEndian.Uint64(b[0:]),
			Len:   binary.LittleEndian.Uint64(b[8:]),
			WP:    binary.LittleEndian.Uint64(b[16:]),
			Type:  b[24],
			Cond:  b[25],
		}
		if flags&zoneRepCapFlag != 0 {
			z.Capacity = binary.LittleEndian.Uint64(b[32:])
		}
		zones = append(zones, z)
	}
	return zones, nil
}

func zoneOp(fd int, req uintptr, z zone) error {
	r := [2]uint64{z.Start, z.Len} // struct blk_zone_range
	return ioctl(fd, req, unsafe.Pointer(&r[0]))
}

type prober struct {
	fd     int
	failed int
}

func (p *prober) check(ok bool, format string, args ...any) {
	status := "ok  "
	if !ok {
		status = "FAIL"
		p.failed++
	}
	fmt.Printf("%s %s\n", status, fmt.Sprintf(format, args...))
}

func (p *prober) zone(i int, z0 zone) zone {
	zs, err := report(p.fd, z0.Start+uint64(i)*z0.Len, 1)
	if err != nil || len(zs) != 1 {
		fmt.Printf("FAIL report zone %d: %v (got %d zones)\n", i, err, len(zs))
		os.Exit(1)
	}
	return zs[0]
}

func main() {
	dev := os.Getenv("ZNS_DEVICE")
	if len(os.Args) > 1 {
		dev = os.Args[1]
	}
	if dev == "" {
		fmt.Fprintln(os.Stderr, "usage: zns-probe [DEVICE] (or set ZNS_DEVICE)")
		os.Exit(2)
	}
	fd, err := syscall.Open(dev, syscall.O_RDWR|syscall.O_DIRECT|syscall.O_CLOEXEC, 0)
	if err != nil {
		fmt.Printf("FAIL open %s: %v\n", dev, err)
		os.Exit(1)
	}
	defer syscall.Close(fd)
	p := &prober{fd: fd}

	zoneSectors, err := getU32(fd, blkGetZoneSz)
	p.check(err == nil && zoneSectors > 0, "BLKGETZONESZ: %d sectors (%d MiB) err=%v", zoneSectors, zoneSectors>>11, err)
	nrZones, err := getU32(fd, blkGetNrZones)
	p.check(err == nil && nrZones >= 3, "BLKGETNRZONES: %d err=%v", nrZones, err)
	lbs, err := getU32(fd, blkSSzGet)
	p.check(err == nil && lbs > 0 && blockSize%lbs == 0, "BLKSSZGET: logical block size %d err=%v", lbs, err)
	var size uint64
	err = ioctl(fd, blkGetSize64, unsafe.Pointer(&size))
	p.check(err == nil && size == uint64(zoneSectors)*uint64(nrZones)*512,
		"BLKGETSIZE64: %d bytes = zones x zone size: err=%v", size, err)
	if p.failed > 0 {
		os.Exit(1)
	}

	all, err := report(fd, 0, int(nrZones))
	p.check(err == nil && len(all) == int(nrZones), "BLKREPORTZONE all: %d zones err=%v", len(all), err)
	if len(all) < 3 {
		os.Exit(1)
	}
	counts := map[string]int{}
	for i, z := range all {
		counts[condNames[z.Cond]]++
		if i < 3 || i == len(all)-1 {
			fmt.Printf("     zone %d: %v\n", i, z)
		}
	}
	fmt.Printf("     conditions: %v\n", counts)
	z0 := all[0]
	p.check(z0.Start == 0 && z0.Len == uint64(zoneSectors) && z0.Type == 2,
		"zone 0 is sequential-write-required, %d sectors long", zoneSectors)
	for i := 0; i < 3; i++ {
		if all[i].Cond != condEmpty {
			fmt.Printf("     zone %d is not empty: resetting it first\n", i)
			if err := zoneOp(fd, blkResetZone, all[i]); err != nil {
				fmt.Printf("FAIL reset zone %d: %v\n", i, err)
				os.Exit(1)
			}
		}
	}

	// An aligned buffer for O_DIRECT.
	buf, err := syscall.Mmap(-1, 0, blockSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		fmt.Printf("FAIL mmap: %v\n", err)
		os.Exit(1)
	}
	for i := range buf {
		buf[i] = byte(i*7 + 3)
	}

	// Zone 0: a write at the write pointer moves it by one block; a write
	// anywhere else fails; reset brings the write pointer back.
	z := p.zone(0, z0)
	n, err := syscall.Pwrite(fd, buf, int64(z.WP)*512)
	p.check(err == nil && n == blockSize, "write %d bytes at zone 0 wp (sector %d): n=%d err=%v", blockSize, z.WP, n, err)
	z = p.zone(0, z0)
	p.check(z.WP == z.Start+blockSize/512 && z.Cond == condImpOpen, "zone 0 after write: %v", z)
	_, err = syscall.Pwrite(fd, buf, int64(z.WP+blockSize/512)*512)
	p.check(err != nil, "write past zone 0 wp is refused: err=%v", err)
	rd, err := syscall.Mmap(-1, 0, blockSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err == nil {
		n, err = syscall.Pread(fd, rd, int64(z.Start)*512)
	}
	p.check(err == nil && n == blockSize && string(rd) == string(buf), "read back the block: n=%d err=%v", n, err)
	err = zoneOp(fd, blkResetZone, z0)
	z = p.zone(0, z0)
	p.check(err == nil && z.WP == z.Start && z.Cond == condEmpty, "BLKRESETZONE zone 0: err=%v, %v", err, z)

	// Zone 1: finish makes it FULL; reset empties it.
	z1 := p.zone(1, z0)
	err = zoneOp(fd, blkFinishZone, z1)
	z = p.zone(1, z0)
	p.check(err == nil && z.Cond == condFull, "BLKFINISHZONE zone 1: err=%v, %v", err, z)
	_, err = syscall.Pwrite(fd, buf, int64(z1.Start)*512)
	p.check(err != nil, "write to a full zone is refused: err=%v", err)
	err = zoneOp(fd, blkResetZone, z1)
	z = p.zone(1, z0)
	p.check(err == nil && z.WP == z.Start && z.Cond == condEmpty, "BLKRESETZONE zone 1: err=%v, %v", err, z)

	// Zone 2: explicit open, a write, close, reset.
	z2 := p.zone(2, z0)
	err = zoneOp(fd, blkOpenZone, z2)
	z = p.zone(2, z0)
	p.check(err == nil && z.Cond == condExpOpen, "BLKOPENZONE zone 2: err=%v, %v", err, z)
	_, err = syscall.Pwrite(fd, buf, int64(z.WP)*512)
	z = p.zone(2, z0)
	p.check(err == nil && z.Cond == condExpOpen && z.WP == z.Start+blockSize/512, "write to open zone 2: err=%v, %v", err, z)
	err = zoneOp(fd, blkCloseZone, z2)
	z = p.zone(2, z0)
	p.check(err == nil && z.Cond == condClosed, "BLKCLOSEZONE zone 2: err=%v, %v", err, z)
	err = zoneOp(fd, blkResetZone, z2)
	z = p.zone(2, z0)
	p.check(err == nil && z.WP == z.Start && z.Cond == condEmpty, "BLKRESETZONE zone 2: err=%v, %v", err, z)

	if p.failed > 0 {
		fmt.Printf("zns-probe: %d check(s) failed\n", p.failed)
		os.Exit(1)
	}
	fmt.Println("zns-probe: all checks passed")
}
