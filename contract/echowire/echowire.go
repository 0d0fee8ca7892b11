// Package echowire is the echo-backend's wire contract: what a client puts
// on a request to steer the backend (the fault spec and the request id, as
// HTTP headers, query parameters or gRPC metadata), the paths and modes of
// its control endpoints, and the JSON of the ledger it reads back.
//
// The conformance tests and the backend's servers both import this package
// and nothing else of each other, as a gRPC client and server share only
// their .proto: the suite an implementer links carries no server code, and
// a test can only depend on what travels on the wire. The fault vocabulary
// itself (the spec's syntax) is documented and parsed in
// echo-backend/fault; a test only writes specs as text.
package echowire

// The carriers of a fault spec ("delay=2s;status=503") and of the request
// id that keys the backend's fault state and ledger.
const (
	FaultHeader   = "X-Gatewitness-Fault" // HTTP request header
	FaultQuery    = "gatewitness-fault"   // HTTP query parameter
	FaultMetadata = "x-gatewitness-fault" // gRPC metadata key

	IDHeader   = "X-Gatewitness-Id" // HTTP request header
	IDQuery    = "gatewitness-id"   // HTTP query parameter
	IDMetadata = "x-gatewitness-id" // gRPC metadata key
)

// AttemptTrailer is the gRPC trailing metadata key that carries a call's
// attempt number (decimal, from 1) on every echo call, including upstream's
// GrpcEcho, whose response has no field for it.
const AttemptTrailer = "x-gatewitness-attempt"

// LedgerPath is the HTTP path prefix of the ledger: GET LedgerPath+id
// answers the id's Entry as JSON (404 when the backend has none), DELETE
// forgets it. The gRPC Admin service reads the same ledger.
const LedgerPath = "/_gatewitness/ledger/"

// The HTTP admin endpoints, under the same prefix as the ledger. Each POST
// sets one switch from its query parameters and answers the switches as
// they are after it (the JSON of GET AdminStatePath).
const (
	// AdminHealthPath sets the status /health answers with:
	// AdminStatusQuery=NNN (200 to 599).
	AdminHealthPath = "/_gatewitness/admin/health"
	// AdminGRPCHealthPath sets a gRPC service's serving status:
	// AdminServiceQuery=name (empty: the server as a whole) and
	// AdminStatusQuery=SERVING, NOT_SERVING, UNKNOWN or SERVICE_UNKNOWN.
	AdminGRPCHealthPath = "/_gatewitness/admin/grpc-health"
	// AdminTCPPath opens or closes the TCP echo listener:
	// AdminOpenQuery=true or false.
	AdminTCPPath = "/_gatewitness/admin/tcp"
	// AdminRefusePath makes the HTTP listeners refuse (reset as they
	// accept) the next AdminConnectionsQuery=N connections (0 stops). Its
	// answer closes its connection, so a proxy's next request to the
	// backend opens a new one.
	AdminRefusePath = "/_gatewitness/admin/refuse"
	// AdminStatePath answers the switches (GET).
	AdminStatePath = "/_gatewitness/admin/state"

	AdminStatusQuery      = "status"
	AdminServiceQuery     = "service"
	AdminOpenQuery        = "open"
	AdminConnectionsQuery = "connections"
)

// AdminState is the JSON answer of GET AdminStatePath and of every admin
// POST: the switches as they are after it.
type AdminState struct {
	HTTPHealth int `json:"httpHealth"`
	// GRPCHealth maps service names to their serving status: the server as
	// a whole (""), every service whose status was set, and each service
	// named by a service= query parameter (SERVICE_UNKNOWN if never set).
	GRPCHealth map[string]string `json:"grpcHealth"`
	TCP        AdminTCPState     `json:"tcp"`
	Refuse     AdminRefuseState  `json:"refuse"`
}

// AdminTCPState is the TCP echo listener's switch.
type AdminTCPState struct {
	Present bool `json:"present"` // a TCP listener runs in this process
	Open    bool `json:"open"`
}

// AdminRefuseState is the refusal of the HTTP listeners' connections.
type AdminRefuseState struct {
	Pending int    `json:"pending"` // connections still to be refused
	Refused uint64 `json:"refused"` // connections refused since the process started
}

// EchoSetHeader is echo-basic's request header that makes the backend add
// the headers it lists ("Name:value,...") to its answer.
const EchoSetHeader = "X-Echo-Set-Header"

// WebSocket control modes. A WebSocket upgrade of /ws with the query
// parameter WSModeQuery set to one of them is answered by the backend itself
// (not echoed), so that it holds the TCP connection, and is recorded in the
// ledger under its request id (IDQuery).
const (
	// WSModeQuery is the query parameter that selects the mode.
	WSModeQuery = "gatewitness-ws"

	// WSHalfClose: right after the 101 the backend shuts its writes (TCP
	// FIN) and waits for its peer to close. The attempt's HeadersSent is
	// the moment of the half-close, Ended the moment the peer closed.
	WSHalfClose = "halfclose"

	// WSHold: the backend reads and drops what arrives and, after its peer
	// half-closes, keeps the connection open without writing. Ended is the
	// peer's half-close.
	WSHold = "hold"
)
