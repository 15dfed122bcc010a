// Command kube runs one upstream control-plane component per process, chosen by its first argument:
//
//	kube etcd|kube-apiserver|kube-scheduler|kube-controller-manager [flags...]
//
// Each component is upstream's own command with upstream's flags. They cannot share a process: each calls
// SetupSignalContext, which panics when called twice (k8s.io/apiserver/pkg/server/signal.go).
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"go.etcd.io/etcd/server/v3/etcdmain"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	_ "time/tzdata" // CronJob time zones, as upstream's kube-apiserver and kube-controller-manager mains import
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: kube etcd|kube-apiserver|kube-scheduler|kube-controller-manager [flags...]")
		os.Exit(2)
	}
	name, args := os.Args[1], os.Args[2:]
	var command *cobra.Command
	switch name {
	case "etcd":
		// etcd's own main: its flags, its exit codes
		etcdmain.Main(append([]string{"etcd"}, args...))
		return
	case "kube-apiserver":
		command = apiserver.NewAPIServerCommand()
	case "kube-scheduler":
		command = scheduler.NewSchedulerCommand()
	case "kube-controller-manager":
		command = controllermanager.NewControllerManagerCommand()
	default:
		fmt.Fprintf(os.Stderr, "kube: unknown component %q\n", name)
		os.Exit(2)
	}
	command.SetArgs(args)
	os.Exit(cli.Run(command))
}
