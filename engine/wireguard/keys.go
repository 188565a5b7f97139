package wireguard

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"

	"golang.org/x/crypto/curve25519"

	"inspector/internal/atomicfile"
)

// Key is a Curve25519 key as WireGuard uses it.
type Key [32]byte

// NewPrivateKey makes a private key (clamped as RFC 7748 says).
func NewPrivateKey() (Key, error) {
	var k Key
	if _, err := rand.Read(k[:]); err != nil {
		return k, err
	}
	k[0] &= 248
	k[31] = (k[31] & 127) | 64
	return k, nil
}

// Public is the public key of private key k.
func (k Key) Public() Key {
	var p Key
	out, _ := curve25519.X25519(k[:], curve25519.Basepoint)
	copy(p[:], out)
	return p
}

// String is the key in base64, as WireGuard's configuration files write it.
func (k Key) String() string { return base64.StdEncoding.EncodeToString(k[:]) }

func (k Key) hex() string { return hex.EncodeToString(k[:]) }

// ParseKey reads a base64 key.
func ParseKey(s string) (Key, error) {
	var k Key
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b) != 32 {
		return k, fmt.Errorf("not a WireGuard key: %q", s)
	}
	copy(k[:], b)
	return k, nil
}

func (k Key) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

func (k *Key) UnmarshalText(b []byte) error {
	p, err := ParseKey(string(b))
	*k = p
	return err
}

// Peer is a device allowed in: its name (shown as the client of its sessions), its
// address inside the tunnel, and its keys (the private key is kept so that its client
// configuration can be printed again).
type Peer struct {
	Name       string     `json:"name"`
	Address    netip.Addr `json:"address"`
	PrivateKey Key        `json:"private_key"`
	PublicKey  Key        `json:"public_key"`
}

// Keys is DATA_DIR/wireguard/keys.json: the server's key and the peers. The file is
// written 0600 in a 0700 folder: it holds private keys.
type Keys struct {
	Version int    `json:"version"`
	Server  Key    `json:"server_private_key"`
	Peers   []Peer `json:"peers"`
}

// KeysFile is the keys' file name inside the WireGuard folder.
const KeysFile = "keys.json"

// Tunnel addresses: the server (the devices' DNS server too) and the first peer's.
var (
	ServerAddr = netip.MustParseAddr("10.233.0.1")
	firstPeer  = netip.MustParseAddr("10.233.0.2")
)

// LoadKeys reads dir/keys.json, making the server's key (and the file) the first time.
func LoadKeys(dir string) (*Keys, error) {
	path := filepath.Join(dir, KeysFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		k, err := NewPrivateKey()
		if err != nil {
			return nil, err
		}
		keys := &Keys{Version: 1, Server: k}
		return keys, keys.Save(dir)
	}
	if err != nil {
		return nil, err
	}
	var keys Keys
	if err := json.Unmarshal(data, &keys); err != nil {
		return nil, fmt.Errorf("WireGuard keys %s are damaged: %v", path, err)
	}
	if keys.Version != 1 {
		return nil, fmt.Errorf("WireGuard keys %s: unknown version %d", path, keys.Version)
	}
	return &keys, nil
}

// Save writes the keys atomically, 0600.
func (k *Keys) Save(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	data, err := json.MarshalIndent(k, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(dir, KeysFile), data, 0o600)
}

var peerName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9 ._-]{0,62}$`)

// Peer returns the peer named name, adding it (with new keys and the next free
// address) when there is none; added says which. Save the keys after an addition.
func (k *Keys) Peer(name string) (p Peer, added bool, err error) {
	if !peerName.MatchString(name) {
		return Peer{}, false, fmt.Errorf("peer name %q: use 1 to 63 letters, digits, spaces, '.', '_' or '-'", name)
	}
	next := firstPeer
	for _, q := range k.Peers {
		if q.Name == name {
			return q, false, nil
		}
		if !q.Address.Less(next) {
			next = q.Address.Next()
		}
	}
	if !netip.MustParsePrefix("10.233.0.0/16").Contains(next) {
		return Peer{}, false, errors.New("no tunnel address left for another peer")
	}
	priv, err := NewPrivateKey()
	if err != nil {
		return Peer{}, false, err
	}
	p = Peer{Name: name, Address: next, PrivateKey: priv, PublicKey: priv.Public()}
	k.Peers = append(k.Peers, p)
	return p, true, nil
}

// ClientConfig is the wg-quick configuration of peer p for a server reachable at
// endpoint (host:port): all its traffic goes into the tunnel, its DNS to the server.
func (k *Keys) ClientConfig(p Peer, endpoint string) string {
	return fmt.Sprintf(`[Interface]
# Inspector: %s
PrivateKey = %s
Address = %s/32
DNS = %s

[Peer]
PublicKey = %s
AllowedIPs = 0.0.0.0/0, ::/0
Endpoint = %s
PersistentKeepalive = 25
`, p.Name, p.PrivateKey, p.Address, ServerAddr, k.Server.Public(), endpoint)
}
