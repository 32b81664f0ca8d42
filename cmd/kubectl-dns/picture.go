package main

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"html/template"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/hash"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
)

// gatewayLabel names the Gateway a DNSRecord of the policy controller publishes
// (controllers/dnspolicy.GatewayLabel, Kuadrant's label).
const gatewayLabel = "gateway.networking.k8s.io/gateway-name"

// whose is what the plugin can tell of the owners of the rows beyond their IDs.
type whose struct {
	owners map[string]ownerInfo
	// cluster is this cluster's ID (the UID of its kube-system namespace), "" when unknown.
	cluster string
	// delegated tells the contributors of the authoritative records among the owners; nil when
	// none was looked for.
	delegated *delegation
}

// ownerInfo is what the plugin can tell of an owner beyond its ID.
type ownerInfo struct {
	// Cluster is the cluster ID (the lease holder) the owner's claims name, when the lease record is
	// in the zone.
	Cluster string
	// Gateway is namespace/name of the Gateway of this cluster's DNSRecord with the owner's ID, or
	// "DNSRecord namespace/name" for a record no Gateway made; "" for another cluster's owner.
	Gateway string
}

// describeOwners finds the cluster of each owner through its lease, and the Gateway or DNSRecord
// of this cluster that has its owner ID (status.ownerID) among records.
func describeOwners(z *registry.Zone, zoneName string, owners []string, records []v1alpha1.DNSRecord, cluster string) whose {
	out := map[string]ownerInfo{}
	for _, o := range owners {
		var info ownerInfo
		for _, k := range leaseKeys(z, o) {
			if st := readLease(z, zoneName, k, time.Time{}); st.found {
				info.Cluster = st.lease.Holder
			}
		}
		for i := range records {
			r := &records[i]
			if r.Status.OwnerID != o || r.Labels[v1alpha1.AuthoritativeRecordLabel] == "true" {
				continue
			}
			info.Gateway = "DNSRecord " + r.Namespace + "/" + r.Name
			if g := r.Labels[gatewayLabel]; g != "" {
				info.Gateway = r.Namespace + "/" + g
			}
		}
		out[o] = info
	}
	return whose{owners: out, cluster: cluster}
}

// leafName matches the name of a cluster's leaf in a loadbalanced tree, c-h.klb.H, where c is
// hash6 of the cluster ID (package builder): it tells the cluster where no lease does.
var leafName = regexp.MustCompile(`^([0-9a-z]{6})-[0-9a-z]{6}\.klb\.`)

// clusterOf names the cluster of a row: the lease holders of its owners, else the cluster its leaf
// name says (this one, or the hash of another's ID).
func (wh whose) clusterOf(r answer) string {
	var clusters []string
	for _, o := range r.Owners {
		if c := wh.owners[o].Cluster; c != "" && !slices.Contains(clusters, c) {
			clusters = append(clusters, c)
		}
	}
	if len(clusters) > 0 {
		for i, c := range clusters {
			if c == wh.cluster {
				clusters[i] += " (this cluster)"
			}
		}
		return strings.Join(clusters, ",")
	}
	m := leafName.FindStringSubmatch(r.Leaf)
	switch {
	case m == nil:
		return "-"
	case wh.cluster != "" && hash.Base36(wh.cluster, 6) == m[1]:
		return wh.cluster + " (this cluster)"
	default:
		return "hash " + m[1]
	}
}

// answerCells are one row's columns as printed, in every format.
type answerCells struct {
	Geo, Weight, Share, Addresses, Owner, Cluster, Gateway, Leaf string
	Notes                                                        []string
	// From says, for a row an authoritative record holds, which contributor each target comes from.
	From []string
	// Fraction is the row's share, for the picture.
	Fraction float64
}

func cells(r answer, wh whose) answerCells {
	c := answerCells{Geo: geoLabel(r.Geo), Weight: "-", Share: percent(r.Share), Addresses: "-", Leaf: r.Leaf,
		Owner: "- (no owner: a human's record)", Cluster: "-", Gateway: "-", Notes: r.Notes, Fraction: r.Share}
	if r.Weighted {
		c.Weight = strconv.FormatUint(r.Weight, 10)
	}
	switch {
	case len(r.Addresses) > 0:
		c.Addresses = strings.Join(r.Addresses, ",")
	case r.CNAME != "":
		c.Addresses = "CNAME " + r.CNAME
	}
	if len(r.Owners) > 0 {
		c.Owner = strings.Join(r.Owners, ",")
		var gateways []string
		for _, o := range r.Owners {
			if g := wh.owners[o].Gateway; g != "" {
				gateways = append(gateways, g)
			}
		}
		c.Gateway = dash(strings.Join(gateways, ","))
	}
	c.Cluster = wh.clusterOf(r)
	if from, clusters, records := wh.delegated.origins(r); len(from) > 0 {
		// A delegation primary's answer: the clusters and records it was merged from.
		c.From, c.Cluster, c.Gateway = from, strings.Join(clusters, ","), dash(strings.Join(records, ","))
	}
	return c
}

func geoLabel(code string) string {
	if code == "" {
		return "all"
	}
	return code
}

// percent formats a share with one decimal, the same on every machine.
func percent(f float64) string {
	return strconv.FormatFloat(f*100, 'f', 1, 64) + "%"
}

// legend explains the columns that the rows use.
func legend(v answerView, wh whose) []string {
	var geo, weighted bool
	for _, r := range v.Rows {
		geo = geo || r.Geo != ""
		weighted = weighted || r.Weighted
	}
	var out []string
	if v.Wildcard != "" {
		out = append(out, "nothing is published at "+v.Host+": the wildcard "+v.Wildcard+" answers for it")
	}
	if geo {
		out = append(out, "a client gets its country's geo set, else its continent's (GEO-xx), else the default set (*)")
	}
	if weighted {
		out = append(out, "SHARE: the part of that geo's clients a leaf gets, its weight over the sum of the geo's weights")
	}
	out = append(out, "CLUSTER: the cluster ID the owner's claims name (its lease), else the one the leaf's name starts with (hash6 of the ID); GATEWAY: this cluster's Gateway (or DNSRecord) with the owner's ID")
	if slices.ContainsFunc(v.Rows, func(r answer) bool { f, _, _ := wh.delegated.origins(r); return len(f) > 0 }) {
		out = append(out, "<-: an answer a delegation primary merged into an authoritative record: which contributor (owner ID) each target comes from, its cluster (the name of the kubeconfig Secret the primary reads it through, and its ID) and DNSRecord; CLUSTER and GATEWAY then name the contributors'")
	}
	return out
}

// printAnswers prints the answers view as a table, each row's notes under it.
func printAnswers(w io.Writer, v answerView, wh whose) {
	if len(v.Rows) == 0 {
		fmt.Fprintf(w, "answers: nothing is published at %s: every client gets no address (NXDOMAIN or no data)\n", v.Host)
		return
	}
	fmt.Fprintf(w, "answers: who a client gets for %s, by its geo and the weights, from the zone as read\n", v.Host)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  GEO\tWEIGHT\tSHARE\tADDRESSES\tOWNER\tCLUSTER\tGATEWAY\tLEAF")
	for _, r := range v.Rows {
		c := cells(r, wh)
		fmt.Fprintln(tw, "  "+strings.Join([]string{c.Geo, c.Weight, c.Share, c.Addresses, c.Owner, c.Cluster, c.Gateway, c.Leaf}, "\t"))
		for _, n := range c.Notes {
			fmt.Fprintln(tw, "    ! "+n)
		}
		for _, f := range c.From {
			fmt.Fprintln(tw, "    <- "+f)
		}
	}
	_ = tw.Flush() // the writer's errors are the output's, as for every other line
	for _, l := range legend(v, wh) {
		fmt.Fprintln(w, "  "+l)
	}
}

// The picture's geometry, in pixels.
const (
	svgMargin  = 20
	svgColumn  = 340
	svgGap     = 20
	svgTitle   = 56
	svgHeading = 28
	svgBar     = 300
	svgLine    = 14
	// svgChars is how many characters of an 11 px monospace line fit in a box; a longer line is cut
	// (the box's title holds it whole).
	svgChars = (svgColumn - 12) * 10 / 66
)

// palette colours the boxes by owner, in the order the owners first appear.
var palette = []string{"#cfe2f3", "#d9ead3", "#fff2cc", "#f4cccc", "#d9d2e9", "#fce5cd", "#d0e0e3", "#ead1dc"}

// geoColumn is the rows of one geo, top to bottom.
type geoColumn struct {
	label string
	rows  []answerCells
}

func columns(v answerView, wh whose) []geoColumn {
	var cols []geoColumn
	for _, r := range v.Rows {
		label := geoLabel(r.Geo)
		switch r.Geo {
		case v1alpha1.WildcardGeo:
			label = "* (default: every other client)"
		case "":
			label = "every client"
		}
		if len(cols) == 0 || cols[len(cols)-1].label != label {
			cols = append(cols, geoColumn{label: label})
		}
		cols[len(cols)-1].rows = append(cols[len(cols)-1].rows, cells(r, wh))
	}
	return cols
}

// writeSVG draws the answers view: one column per geo, one box per leaf, its height the leaf's
// share of the geo's clients, labelled with what the clients get and whose it is. The image is
// self-contained (no fonts, scripts or links) and the same bytes for the same zone.
func writeSVG(w io.Writer, title string, v answerView, wh whose) error {
	cols := columns(v, wh)
	width := 2*svgMargin + max(1, len(cols))*svgColumn + max(0, len(cols)-1)*svgGap
	height := 2*svgMargin + svgTitle + svgHeading + svgBar
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="monospace" font-size="11">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, "<title>%s</title>\n", esc(title))
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="15" font-weight="bold">%s</text>`+"\n", svgMargin, svgMargin+16, esc(title))
	sub := "box height: the part of the geo's clients that get the leaf"
	if len(cols) == 0 {
		sub = "nothing is published at " + v.Host + ": every client gets no address"
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", svgMargin, svgMargin+36, esc(sub))
	colour := map[string]string{}
	for i, col := range cols {
		x := svgMargin + i*(svgColumn+svgGap)
		top := svgMargin + svgTitle
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="13" font-weight="bold">%s</text>`+"\n", x, top+16, esc(col.label))
		y := float64(top + svgHeading)
		for _, c := range col.rows {
			if _, ok := colour[c.Owner]; !ok {
				colour[c.Owner] = palette[len(colour)%len(palette)]
			}
			h := c.Fraction * svgBar
			writeBox(&b, x, y, h, colour[c.Owner], c)
			y += h
		}
	}
	b.WriteString("</svg>\n")
	_, err := w.Write(b.Bytes())
	return err
}

// writeBox draws one leaf: as many label lines as its height holds, and all of them in its title.
func writeBox(b *bytes.Buffer, x int, y, h float64, fill string, c answerCells) {
	stroke, dash := "#333333", ""
	if len(c.Notes) > 0 {
		stroke, dash = "#cc0000", ` stroke-dasharray="6 3"`
	}
	// The notes right after the addresses: a small box still shows that something is wrong.
	lines := slices.Concat([]string{c.Share + " of these clients, weight " + c.Weight, c.Addresses}, c.Notes,
		[]string{"owner " + c.Owner, "cluster " + c.Cluster, "gateway " + c.Gateway})
	full := slices.Concat(lines, []string{"leaf " + c.Leaf}, c.From)
	b.WriteString("<g>\n")
	fmt.Fprintf(b, "<title>%s</title>\n", esc(strings.Join(full, "\n")))
	fmt.Fprintf(b, `<rect x="%d" y="%s" width="%d" height="%s" fill="%s" stroke="%s" stroke-width="1.5"%s/>`+"\n", x, num(y), svgColumn, num(h), fill, stroke, dash)
	fit := int((h - 6) / svgLine)
	for i, l := range lines[:min(len(lines), max(fit, 0))] {
		if r := []rune(l); len(r) > svgChars {
			l = string(r[:svgChars-1]) + "…"
		}
		weight := ""
		if i == 1 {
			weight = ` font-weight="bold"` // what the clients get
		}
		fmt.Fprintf(b, `<text x="%d" y="%s"%s>%s</text>`+"\n", x+6, num(y+float64((i+1)*svgLine)), weight, esc(l))
	}
	b.WriteString("</g>\n")
}

// num formats a coordinate with one decimal, the same on every machine.
func num(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }

func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s)) // a strings.Builder does not fail
	return b.String()
}

var page = template.Must(template.New("answers").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{.Title}}</title>
<style>
body { font-family: sans-serif; margin: 2em; }
table { border-collapse: collapse; margin-top: 1em; }
th, td { border: 1px solid #999999; padding: 0.3em 0.6em; text-align: left; font-family: monospace; }
td.note { color: #cc0000; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p>{{.Header}}</p>
{{.Picture}}
{{if .Rows}}<table>
<tr><th>GEO</th><th>WEIGHT</th><th>SHARE</th><th>ADDRESSES</th><th>OWNER</th><th>CLUSTER</th><th>GATEWAY</th><th>LEAF</th></tr>
{{range .Rows}}<tr><td>{{.Geo}}</td><td>{{.Weight}}</td><td>{{.Share}}</td><td>{{.Addresses}}</td><td>{{.Owner}}</td><td>{{.Cluster}}</td><td>{{.Gateway}}</td><td>{{.Leaf}}</td></tr>
{{range .Notes}}<tr><td class="note" colspan="8">{{.}}</td></tr>
{{end}}{{range .From}}<tr><td colspan="8">&lt;- {{.}}</td></tr>
{{end}}{{end}}</table>
{{end}}<ul>
{{range .Legend}}<li>{{.}}</li>
{{end}}</ul>
</body>
</html>
`))

// writeHTML writes a self-contained page: the picture and the table, with no script, font or link.
func writeHTML(w io.Writer, title, header string, v answerView, wh whose) error {
	var svg bytes.Buffer
	if err := writeSVG(&svg, title, v, wh); err != nil {
		return err
	}
	var rows []answerCells
	for _, r := range v.Rows {
		rows = append(rows, cells(r, wh))
	}
	legendLines := legend(v, wh)
	if len(rows) == 0 {
		legendLines = nil
	}
	return page.Execute(w, struct {
		Title, Header string
		// Picture is writeSVG's output, every text in it escaped there.
		Picture template.HTML
		Rows    []answerCells
		Legend  []string
	}{title, header, template.HTML(svg.String()), rows, legendLines})
}
