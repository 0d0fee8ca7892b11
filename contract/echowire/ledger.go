package echowire

import "time"

// Outcome says how an attempt ended.
type Outcome string

// Outcomes.
const (
	InFlight  Outcome = "in-flight" // not ended yet
	Answered  Outcome = "answered"  // a complete response was sent
	Reset     Outcome = "reset"     // the backend reset the stream or connection (fault)
	Closed    Outcome = "closed"    // the backend closed the connection without a response (fault)
	GoAway    Outcome = "goaway"    // the backend sent GOAWAY (fault)
	Cancelled Outcome = "cancelled" // the client or proxy went away first
	Rejected  Outcome = "rejected"  // the request was invalid (bad fault spec)
)

// Attempt is one attempt of a request id, as the backend saw it. Times are
// the backend's clock.
type Attempt struct {
	Number      int        `json:"attempt"` // 1-based, per request id
	Arrived     time.Time  `json:"arrived"`
	HeadersSent *time.Time `json:"headersSent,omitempty"`
	Ended       *time.Time `json:"ended,omitempty"`
	Outcome     Outcome    `json:"outcome"`
	CancelledAt *time.Time `json:"cancelledAt,omitempty"`

	Listener    string              `json:"listener"`           // "http", "h2c", "https", "grpc", "grpcs", "tcp"
	Protocol    string              `json:"protocol"`           // "HTTP/1.1", "HTTP/2.0", ...
	Conn        string              `json:"conn"`               // connection id and peer, e.g. "c12 127.0.0.1:40112"
	Stream      uint32              `json:"stream,omitempty"`   // HTTP/2 stream id (0 on HTTP/1.1)
	ConnRequest int                 `json:"connRequest"`        // n-th request seen on that connection
	Method      string              `json:"method"`             // HTTP method or gRPC full method
	Path        string              `json:"path"`               // request URI
	Headers     map[string][]string `json:"headers"`            // as received (incl. grpc-timeout)
	Fault       string              `json:"fault,omitempty"`    // the action applied, in spec syntax
	Status      int                 `json:"status,omitempty"`   // HTTP status sent
	GRPCCode    string              `json:"grpcCode,omitempty"` // gRPC code sent
	BodyBytes   int64               `json:"bodyBytes"`          // request body length read
	BodySHA256  string              `json:"bodySha256,omitempty"`
	// Messages counts the request messages of a gRPC call read so far,
	// and FirstMessage is when the first of them was read: while a
	// client stream is open they show whether what the client sent has
	// reached the backend, or is held on the way.
	Messages     int        `json:"messages,omitempty"`
	FirstMessage *time.Time `json:"firstMessage,omitempty"`

	// Truncated lists what the ledger cut to stay within its bounds, as
	// "headers: 1048576 bytes not kept"; empty when the attempt is whole.
	// Bodies are never kept, only their length and digest.
	Truncated []string `json:"truncated,omitempty"`
}

// Entry is the ledger of one request id: its attempts in arrival order.
type Entry struct {
	ID       string    `json:"id"`
	Attempts []Attempt `json:"attempts"`
	Dropped  int       `json:"dropped"` // attempts counted but not stored (over the backend's bound)
}
