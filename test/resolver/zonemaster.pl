# Runs zonemaster-cli with its name servers' addresses mapped to loopback ports: Zonemaster always
# queries port 53, and the servers under test listen on free high ports.
use strict;
use warnings;
use Zonemaster::LDNS;
my %port;
my %addr;
for (split /,/, $ENV{ZONEMASTER_PORTS} // '') {
    my ($ip, $to) = split /=/;
    my ($a, $p) = split /#/, $to;
    $addr{$ip} = $a; $port{$ip} = $p;
}
{
    no warnings 'redefine';
    my $new = \&Zonemaster::LDNS::new;
    *Zonemaster::LDNS::new = sub {
        my ($class, @args) = @_;
        my $ip = $args[0];
        return $new->($class, @args) unless defined $ip && exists $port{$ip};
        my $res = $new->($class, $addr{$ip});
        $res->port($port{$ip});
        return $res;
    };
}
do '/usr/bin/zonemaster-cli';
die $@ if $@;
