# The echo-backend image used in clusters: a static binary on distroless.
#   docker build -t gatewitness/echo-backend:dev .
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOTOOLCHAIN=local go build -trimpath -ldflags='-s -w' -o /out/echo-backend ./cmd/echo-backend

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/echo-backend /echo-backend
EXPOSE 3000 3001 3002 8443
USER nonroot:nonroot
ENTRYPOINT ["/echo-backend"]
