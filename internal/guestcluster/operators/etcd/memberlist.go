package etcd

import (
	"context"
	"strings"
	"time"

	"github.com/bootlab/bootlab/internal/wire"
)

// memberStates lists the members through c's endpoint with each one's
// state: voter or learner, and which is the leader (endpoint status).
func (c Etcdctl) memberStates(ctx context.Context) ([]wire.EtcdMember, error) {
	list, err := c.memberListJSON(ctx)
	if err != nil {
		return nil, err
	}
	status, err := c.statusJSON(ctx)
	if err != nil {
		return nil, err
	}
	return wire.ParseEtcdMembers(list, status)
}

// ReadMembers reads the member list through the first of ctls that
// answers: a master's own member once it votes (a learner refuses member
// list), the bootstrap's before, so the list is there from stage 07 to
// after the bootstrap's member is removed.
func ReadMembers(ctx context.Context, ctls ...Etcdctl) wire.EtcdMembers {
	var errs []string
	out := wire.EtcdMembers{Members: []wire.EtcdMember{}}
	for _, c := range ctls {
		out.Endpoint = strings.Join(c.endpoints, ",")
		ms, err := c.memberStates(ctx)
		if err == nil {
			out.Members, out.Time = ms, time.Now().UTC()
			return out
		}
		errs = append(errs, err.Error())
	}
	out.Time, out.Error = time.Now().UTC(), strings.Join(errs, "; ")
	return out
}
