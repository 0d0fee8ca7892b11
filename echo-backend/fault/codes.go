// The names of gRPC status codes and HTTP/2 error codes, as a spec writes
// them and as the backend reports them.

package fault

import (
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
)

// grpcCodeNames are the canonical gRPC code names, indexed by code.
var grpcCodeNames = [...]string{
	"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
	"NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
	"FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED",
	"INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED",
}

// resetCodeNames are the HTTP/2 error code names, indexed by code.
var resetCodeNames = [...]string{
	"NO_ERROR", "PROTOCOL_ERROR", "INTERNAL_ERROR", "FLOW_CONTROL_ERROR",
	"SETTINGS_TIMEOUT", "STREAM_CLOSED", "FRAME_SIZE_ERROR", "REFUSED_STREAM",
	"CANCEL", "COMPRESSION_ERROR", "CONNECT_ERROR", "ENHANCE_YOUR_CALM",
	"INADEQUATE_SECURITY", "HTTP_1_1_REQUIRED",
}

// GRPCCodeName returns the canonical upper-snake name of c, such as
// "UNAVAILABLE", or its number for a code outside 0..16.
func GRPCCodeName(c codes.Code) string {
	if int(c) < len(grpcCodeNames) {
		return grpcCodeNames[c]
	}
	return strconv.FormatUint(uint64(c), 10)
}

// ResetCodeName returns the name of an HTTP/2 error code, such as
// "INTERNAL_ERROR", or its number for an unnamed code.
func ResetCodeName(code uint32) string {
	if int(code) < len(resetCodeNames) {
		return resetCodeNames[code]
	}
	return strconv.FormatUint(uint64(code), 10)
}

// field is a set of directives, to find duplicates and to merge a script

// parseGRPCCode accepts 0..16, the upper-snake names and grpc-go's
// CamelCase names (codes.Code.String), in any case.
func parseGRPCCode(s string) (codes.Code, bool) {
	if isDigits(s) {
		n, ok := parseNumber(s, uint64(len(grpcCodeNames)-1))
		return codes.Code(n), ok
	}
	for i, name := range grpcCodeNames {
		if strings.EqualFold(s, name) || strings.EqualFold(s, codes.Code(i).String()) {
			return codes.Code(i), true
		}
	}
	return 0, false
}

// parseResetCode accepts a 32-bit number or an HTTP/2 error code name.
func parseResetCode(s string) (uint32, bool) {
	if isDigits(s) {
		n, ok := parseNumber(s, 1<<32-1)
		return uint32(n), ok
	}
	for i, name := range resetCodeNames {
		if strings.EqualFold(s, name) {
			return uint32(i), true
		}
	}
	return 0, false
}
