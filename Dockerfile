# The echo-backend image used in clusters: a static binary on distroless.
#   docker build -t gatewitness/echo-backend:dev .
#   docker build --target gateway -t gatewitness/gateway:dev .   # the reference gateway (kind/reference)
# Without a registry (make release, make kind-images offline): a binary built
# on the host, in bin/ of the build context, on a local base:
#   docker build --target prebuilt --build-arg BASE_IMAGE=scratch -t gatewitness/echo-backend:v0.1.0 CONTEXT
#   docker build --target gateway-prebuilt --build-arg BASE_IMAGE=scratch -t gatewitness/gateway:dev .
# The prebuilt stages come first: Docker's classic builder builds every
# stage before the target, and golang:1.26 is not there offline.
ARG BASE_IMAGE=gcr.io/distroless/static-debian12:nonroot

FROM ${BASE_IMAGE} AS prebuilt
COPY bin/echo-backend /echo-backend
EXPOSE 3000 3001 3002 8443
# distroless's nonroot user, by number: a base without /etc/passwd
# (scratch) runs it the same.
USER 65532:65532
ENTRYPOINT ["/echo-backend"]

# The reference gateway (gatewitness gateway) from bin/.
FROM ${BASE_IMAGE} AS gateway-prebuilt
COPY bin/gatewitness /gatewitness
USER 65532:65532
ENTRYPOINT ["/gatewitness"]

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOTOOLCHAIN=local go build -trimpath -ldflags='-s -w' -o /out/echo-backend ./cmd/echo-backend
RUN CGO_ENABLED=0 GOTOOLCHAIN=local go build -trimpath -buildvcs=false -ldflags='-s -w' -o /out/gatewitness ./cmd/gatewitness

# The reference gateway, built here.
FROM gcr.io/distroless/static-debian12:nonroot AS gateway
COPY --from=build /out/gatewitness /gatewitness
USER nonroot:nonroot
ENTRYPOINT ["/gatewitness"]

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/echo-backend /echo-backend
EXPOSE 3000 3001 3002 8443
USER nonroot:nonroot
ENTRYPOINT ["/echo-backend"]
