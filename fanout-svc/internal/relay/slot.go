package relay

import "strings"

// keySlot returns the Redis Cluster hash slot of key: CRC16 (XMODEM) of the hash tag, the part
// between the first "{" and the next "}" when that part is not empty, else of the whole key,
// modulo 16384. Every channel of a post carries the post id as its hash tag, so a post's channel
// and keys share a slot.
func keySlot(key string) int {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if n := strings.IndexByte(key[open+1:], '}'); n > 0 {
			key = key[open+1 : open+1+n]
		}
	}
	return int(crc16(key) % slotCount)
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0), the checksum Redis Cluster uses.
// Bitwise, without a table: it runs once per subscription, never per message.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
