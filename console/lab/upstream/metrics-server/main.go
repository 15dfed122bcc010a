// Command metrics-server is upstream's metrics-server (sigs.k8s.io/metrics-server, cmd/metrics-server), built
// from the release pinned in go.mod: the lab runs it to serve metrics.k8s.io from its kubelets' /metrics/resource.
// console/lab/upstream/build.py builds it; console/lab/metricsserver.py runs and registers it.
package main

import (
	"os"
	"runtime"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/logs"

	"sigs.k8s.io/metrics-server/cmd/metrics-server/app"
)

// main is upstream's cmd/metrics-server/metrics-server.go
func main() {
	logs.InitLogs()
	defer logs.FlushLogs()

	if len(os.Getenv("GOMAXPROCS")) == 0 {
		runtime.GOMAXPROCS(runtime.NumCPU())
	}

	cmd := app.NewMetricsServerCommand(genericapiserver.SetupSignalHandler())
	if err := cmd.Execute(); err != nil {
		panic(err)
	}
}
