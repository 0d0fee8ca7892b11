package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gatewitness/gatewitness/cluster/pods"
)

// logPath is the one REST path the cluster's API server answers.
const logPath = "/api/v1/namespaces/{namespace}/pods/{name}/log"

// apiServer is the embedded cluster's Kubernetes REST API, as far as the
// upstream suite needs one beyond its controller-runtime client: pod logs.
// Everything else is answered 501 with a Status that says so.
type apiServer struct {
	store client.Reader
	pods  *pods.Runner

	ln   net.Listener
	srv  *http.Server
	done chan struct{}
}

// startAPI serves the API on a free port of 127.0.0.1.
func startAPI(store client.Reader, runner *pods.Runner) (*apiServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening for the pod log API: %w", err)
	}
	a := &apiServer{store: store, pods: runner, ln: ln, done: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc(logPath, a.serveLog)
	mux.HandleFunc("/", a.serveOther)
	a.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 64 << 10}
	go func() {
		defer close(a.done)
		a.srv.Serve(ln) // returns http.ErrServerClosed after close
	}()
	return a, nil
}

// url is the base URL of the API, for a rest.Config's Host.
func (a *apiServer) url() string { return "http://" + a.ln.Addr().String() }

// close stops the server, ending open requests, and waits for it.
func (a *apiServer) close() error {
	err := a.srv.Close()
	<-a.done
	return err
}

// serveOther answers every request but a pod log's.
func (a *apiServer) serveOther(w http.ResponseWriter, r *http.Request) {
	writeStatus(w, http.StatusNotImplemented, "NotImplemented", fmt.Sprintf(
		"%s %s: the in-process cluster's REST API serves only GET %s; use the suite's controller-runtime client for objects, or run against a cluster with --kubeconfig",
		r.Method, r.URL.Path, logPath), nil)
}

// logQuery is what serveLog takes from the query: the fields of
// corev1.PodLogOptions it implements.
type logQuery struct {
	container  string
	since      time.Time
	tail       int // -1 for every line
	limit      int // 0 for no limit
	timestamps bool
}

// parseLogQuery reads the query as the API server reads PodLogOptions,
// with an error naming the parameter and the accepted form.
func parseLogQuery(q url.Values, now time.Time) (logQuery, error) {
	lq := logQuery{container: q.Get("container"), tail: -1}
	var errs []error
	boolean := func(name string) bool {
		v := q.Get(name)
		if v == "" {
			return false
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: accepted: true or false", name, v))
		}
		return b
	}
	number := func(name string, least int) (int, bool) {
		v := q.Get(name)
		if v == "" {
			return 0, false
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < least {
			errs = append(errs, fmt.Errorf("%s=%q: accepted: a whole number of at least %d", name, v, least))
			return 0, false
		}
		return n, true
	}
	lq.timestamps = boolean("timestamps")
	if boolean("follow") {
		errs = append(errs, errors.New("follow=true: accepted: false; the in-process cluster answers with the log as it is and does not follow it"))
	}
	if boolean("previous") {
		errs = append(errs, errors.New("previous=true: accepted: false; in-process containers are never restarted, so there is no previous one"))
	}
	if n, ok := number("tailLines", 0); ok {
		lq.tail = n
	}
	if n, ok := number("limitBytes", 1); ok {
		lq.limit = n
	}
	if v := q.Get("sinceTime"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			errs = append(errs, fmt.Errorf("sinceTime=%q: accepted: an RFC 3339 time such as 2006-01-02T15:04:05Z", v))
		}
		lq.since = t
	}
	if n, ok := number("sinceSeconds", 1); ok {
		if q.Get("sinceTime") != "" {
			errs = append(errs, errors.New("sinceSeconds and sinceTime: accepted: at most one of them"))
		}
		lq.since = now.Add(-time.Duration(n) * time.Second)
	}
	return lq, errors.Join(errs...)
}

// serveLog answers GET /api/v1/namespaces/{namespace}/pods/{name}/log from
// the pod runner's logs, as the kubelet would: text, one line per log line,
// optionally with an RFC 3339 timestamp before each.
func (a *apiServer) serveLog(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	details := &metav1.StatusDetails{Name: name, Kind: "pods"}
	if r.Method != http.MethodGet {
		writeStatus(w, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed,
			fmt.Sprintf("%s %s: accepted: GET", r.Method, r.URL.Path), details)
		return
	}
	lq, err := parseLogQuery(r.URL.Query(), time.Now())
	if err != nil {
		writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, "pod log query: "+err.Error(), details)
		return
	}
	log, err := a.pods.Log(ns, name, lq.container)
	if errors.Is(err, pods.ErrNoPod) {
		a.writeNoPod(w, r.Context(), ns, name, details)
		return
	}
	if err != nil {
		writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error(), details)
		return
	}

	var out []byte
	if log != nil {
		for _, l := range log.Lines(lq.since, lq.tail) {
			if lq.timestamps {
				out = l.Time.UTC().AppendFormat(out, time.RFC3339Nano)
				out = append(out, ' ')
			}
			out = append(out, l.Text...)
			out = append(out, '\n')
			if lq.limit > 0 && len(out) >= lq.limit {
				out = out[:lq.limit]
				break
			}
		}
	}
	w.Header().Set("Content-Type", "text/plain")
	w.Header().Set("Content-Length", strconv.Itoa(len(out)))
	w.Write(out)
}

// writeNoPod answers a log request for a Pod the runner does not run: 404
// if there is no such Pod, 400 if it exists but is not run in-process.
func (a *apiServer) writeNoPod(w http.ResponseWriter, ctx context.Context, ns, name string, details *metav1.StatusDetails) {
	err := a.store.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.Pod{})
	switch {
	case apierrors.IsNotFound(err):
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, fmt.Sprintf("pods %q not found", name), details)
	case err != nil:
		writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, fmt.Sprintf("reading pod %s/%s: %v", ns, name, err), details)
	default:
		writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, fmt.Sprintf(
			"pod %s/%s has no log: in-process, only the pods the pod runner starts for Deployments have one", ns, name), details)
	}
}

// writeStatus answers with a failure Status, as the API server does, so a
// client-go caller gets an error with this reason and message.
func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, msg string, details *metav1.StatusDetails) {
	st := metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Message:  msg,
		Reason:   reason,
		Details:  details,
		Code:     int32(code),
	}
	body, err := json.Marshal(st)
	if err != nil {
		http.Error(w, msg, code)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(body)
}
